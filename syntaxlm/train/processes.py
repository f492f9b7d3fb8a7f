"""The data-parallel processes of a run: ``start_processes`` joins the process group ``torchrun``
describes and picks this process's device; ``Processes`` is this process's place among them, with
what the trainer asks of the group (a barrier, sums, gathering onto the first process)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from syntaxlm.errors import ConfigError


@dataclass
class Processes:
    """This process's place among the data-parallel ones (one process: rank 0 of 1)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    owns_group: bool = False

    @property
    def main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

    def sum(self, values: list[float], device: torch.device) -> list[float]:
        if self.world_size == 1:
            return values
        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(tensor)
        return tensor.tolist()

    def gather(self, value: Any) -> list[Any]:
        """``value`` of every process, on rank 0 (other ranks get an empty list)."""
        if self.world_size == 1:
            return [value]
        gathered = [None] * self.world_size if self.main else None
        dist.gather_object(value, gathered, dst=0)
        return gathered or []


def start_processes(device_choice: str) -> tuple[Processes, torch.device]:
    """Join the process group ``torchrun`` describes (``WORLD_SIZE`` > 1) and pick this process's device."""
    if device_choice == "cuda" and not torch.cuda.is_available():
        raise ConfigError("train.device is 'cuda' but no CUDA device is available")
    use_cuda = device_choice == "cuda" or (device_choice == "auto" and torch.cuda.is_available())
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1 and not dist.is_initialized():
        return Processes(), torch.device("cuda" if use_cuda else "cpu")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if use_cuda:
        torch.cuda.set_device(local_rank)
    owns = False
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if use_cuda else "gloo")
        owns = True
    processes = Processes(dist.get_rank(), dist.get_world_size(), local_rank, owns)
    return processes, torch.device(f"cuda:{local_rank}" if use_cuda else "cpu")
