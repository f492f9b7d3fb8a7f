"""One training loop for every model: AdamW, warm-up and decay, clipping, bf16, accumulation,
validation with early stopping, checkpoints and exact resume, data parallelism (``torchrun``).

The loop talks to a model only through ``TrainedModel``: ``prepare`` makes the corpora, ``loss``
gives NLL sums per part. A step's objective is that of one global batch (all micro-batches of the
step over all processes)::

    objective = Σ_part weight_part · (Σ sums_part) / (Σ counts_part)

Each micro-batch's ``Batch.counts`` are those of its whole global batch, so every process divides
its own sums by the step's global counts; under data parallelism the result is multiplied by the
number of processes, which the gradient averaging of DistributedDataParallel undoes. Parts whose
step count is zero are left out.

Around the loop: the run folder (``run_folder``: its files, its lock, model folders replaced whole),
the data-parallel processes (``processes``), and the data, made ready by ``syntaxlm.data.prepare``.

Randomness during training is seeded at every step from ``(seed, process rank, step)``, so a
resumed run draws the same dropout masks as one that was never stopped.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn

from syntaxlm.data.batching import Batch, RowCorpus
from syntaxlm.data.prepare import (
    POS_TAGS_HINT,
    check_inputs,
    prepared_corpus,
    run_vocabulary,
    write_data_files,
)
from syntaxlm.data.treebank import DataProblems, read_treebank_positions
from syntaxlm.errors import ConfigError, MissingPosTagError, TrainingError
from syntaxlm.files import NO_SPACE, no_space_reported
from syntaxlm.models import TrainedModel, construct_model, model_class
from syntaxlm.models.base import LossOutput
from syntaxlm.models.scoring import evaluating
from syntaxlm.results import result_record, write_result
from syntaxlm.train.checkpoint import (
    CHECKPOINT_FILE,
    TrainingState,
    load_checkpoint,
    save_checkpoint,
)
from syntaxlm.train.config import RunConfig, TrainConfig
from syntaxlm.train.logs import RunLog
from syntaxlm.train.processes import Processes, start_processes
from syntaxlm.train.run_folder import (
    BEST,
    LAST,
    RESULT_FILE,
    checkpoint_step,
    prepare_run_folder,
    run_folder_lock,
    save_model_folder,
    tidy_run_folder,
    write_run_config,
)

_clock = time.monotonic  # the clock of train.max_minutes



class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped by Ctrl-C (``KeyboardInterrupt``): the step reached and the checkpoint a
    resumed run starts from (``checkpoint`` None when none was written yet)."""

    def __init__(self, run: Path, step: int | None = None):
        path = run / CHECKPOINT_FILE
        self.run = run
        self.checkpoint = path if path.is_file() else None
        self.checkpoint_step = None if self.checkpoint is None else checkpoint_step(path)
        self.step = step if step is not None else (self.checkpoint_step or 0)
        super().__init__(run, self.step)  # the arguments again, for pickling (worker processes)

    def __str__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        text = f"training in {self.run} interrupted at step {self.step}; "
        if self.checkpoint is None:
            return text + "no checkpoint written yet (a resumed run starts from step 0)"
        text += f"last checkpoint: step {self.checkpoint_step} ({self.checkpoint})"
        if self.checkpoint_step != self.step:
            text += f"; a resumed run trains the steps after {self.checkpoint_step} again"
        return text


@dataclass
class TrainResult:
    """How a run ended. Losses are nats per target of the model's ``validation_part`` on the
    validation set (tokens of the ``lm`` part for a language model; words for the parser), beside
    the model's ``baseline`` (``TrainedModel.baseline_loss``: the unigram model for an LM)."""

    run: Path
    steps: int
    stopped: str  # "max_steps", "epochs", "early_stopping" or "max_minutes" (the time budget)
    best_valid_loss: float | None
    best_step: int | None
    last_valid_loss: float | None
    baseline_valid_loss: float
    model: TrainedModel
    baseline: str = "unigram"
    skipped_batches: int = 0  # batches of steps skipped for a non-finite loss (train.on_nonfinite: skip)
    train_seconds: float = 0.0  # wall-clock seconds of the training loop, over resumes
    data_problems: dict[str, Any] = field(default_factory=dict)  # {"train"/"valid": DataProblems.to_dict()}

    @property
    def best_valid_perplexity(self) -> float | None:
        return None if self.best_valid_loss is None else math.exp(self.best_valid_loss)

    def describe(self, max_minutes: float | None = None) -> str:
        """One line: the steps, why training stopped (``max_minutes``: the run's time budget,
        train.max_minutes), the best and last validation losses and the baseline's."""
        best = "none" if self.best_valid_loss is None else f"{self.best_valid_loss:.4f}"
        last = "none" if self.last_valid_loss is None else f"{self.last_valid_loss:.4f}"
        stopped = self.stopped.replace("_", " ")
        if self.stopped == "max_minutes":
            stopped = f"time budget of {max_minutes:g} minutes (train.max_minutes) spent"
        return (
            f"{self.steps} steps ({stopped}); "
            f"best validation loss {best} {self.model.loss_unit} at step {self.best_step} "
            f"(model in {self.run / 'best'}); "
            f"last {last}; {self.baseline} baseline {self.baseline_valid_loss:.4f}"
        )


# --- the pieces of a step ----------------------------------------------------------------------------


def planned_steps(config: TrainConfig, batches_per_epoch: int) -> int:
    """How many steps a run takes: ``max_steps``, or fewer when ``epochs`` ends it first (a step
    takes ``grad_accum`` micro-batches, and may straddle two epochs)."""
    if config.epochs is None:
        return config.max_steps
    return min(config.max_steps, math.ceil(config.epochs * max(batches_per_epoch, 1) / config.grad_accum))


def lr_factor(step: int, config: TrainConfig, total_steps: int | None = None) -> float:
    """The learning rate of step ``step`` (0-based) as a fraction of ``config.lr``.

    Linear warm-up over ``warmup_steps``, then ``cosine`` decay to ``min_lr_ratio`` at the run's last
    step (``total_steps``: ``planned_steps``; ``max_steps`` when not given), ``inverse-sqrt`` decay
    (√(warmup / step), not below ``min_lr_ratio``) or ``constant``.
    """
    total = config.max_steps if total_steps is None else total_steps
    warmup = config.warmup_steps
    if step < warmup:
        return (step + 1) / warmup
    floor = config.min_lr_ratio
    if config.schedule == "constant":
        return 1.0
    if config.schedule == "inverse-sqrt":
        return max(floor, math.sqrt(max(warmup, 1) / (step + 1)))
    # The last step (total - 1) reaches the floor.
    progress = min(1.0, (step - warmup) / max(1, total - 1 - warmup))
    return floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress))


def step_objective(output: LossOutput, weights: dict[str, float], counts: dict[str, int]) -> Tensor:
    """``Σ_part weight · sum / count`` of one micro-batch, ``counts`` being the whole step's."""
    terms = [
        weight * output.sums[part].float() / counts[part]
        for part, weight in weights.items()
        if counts.get(part, 0) > 0 and part in output.sums
    ]
    if not terms:  # nothing to predict in the step: a zero that still reaches every graph
        terms = [0.0 * value.float() for value in output.sums.values()]
    return torch.stack(terms).sum()


@dataclass
class StepSums:
    """The NLL sums (this process's rows) and global target counts of the micro-batches of one step."""

    sums: dict[str, float]
    counts: dict[str, int]
    state: Any = None


def accumulate_gradients(
    module: nn.Module,
    batches: Sequence[Batch],
    state: Any = None,
    *,
    weights: dict[str, float],
    device: torch.device | str = "cpu",
    precision: str = "fp32",
    world_size: int = 1,
) -> StepSums:
    """Forward and backward every micro-batch of a step, gradients adding up in ``.grad``.

    ``module`` is a ``TrainedModel`` or the data-parallel wrapper of one (whose gradient averaging is
    then synchronised on the last micro-batch only). ``state`` is passed from batch to batch.
    """
    counts: dict[str, int] = {}
    for batch in batches:
        for part, count in batch.counts.items():
            counts[part] = counts.get(part, 0) + count
    sums: dict[str, float] = {}
    device = torch.device(device)
    for i, batch in enumerate(batches):
        last = i == len(batches) - 1
        sync = contextlib.nullcontext() if last or not hasattr(module, "no_sync") else module.no_sync()
        stand_in = batch.size == 0  # see _micro_batches: its row counts for nothing
        with sync:
            with _autocast(device, precision):
                output = _loss(module, batch.to(device), state)
            scale = 0.0 if stand_in else float(world_size)
            (step_objective(output, weights, counts) * scale).backward()
        state = detach(output.state)
        for part, value in output.sums.items():
            sums[part] = sums.get(part, 0.0) + (0.0 if stand_in else float(value.detach().float()))
    return StepSums(sums=sums, counts=counts, state=state)


def weighted_loss(sums: dict[str, float], counts: dict[str, int], weights: dict[str, float]) -> float:
    """The objective's value from summed NLL and counts (parts with no targets left out)."""
    return sum(
        weight * sums[part] / counts[part] for part, weight in weights.items() if counts.get(part, 0) > 0
    )


def evaluate(
    model: TrainedModel,
    corpus: RowCorpus,
    *,
    batch_size: int,
    device: torch.device | str = "cpu",
    precision: str = "fp32",
    rank: int = 0,
    world_size: int = 1,
) -> dict[str, float]:
    """Validation loss: Σ sums / Σ counts of the model's ``validation_part`` over ``corpus`` (nats
    per target: the ``lm`` part's tokens for a language model), in eval mode.

    Returns ``{"loss", "perplexity", "tokens"}``. With several processes each scores its rows and
    the sums are added up, so every process gets the numbers of the whole corpus.
    """
    device = torch.device(device)
    total = torch.zeros((), dtype=torch.float64, device=device)
    tokens = 0
    state = None
    with evaluating(model):
        for batch in corpus.batches(batch_size, shuffle=False, rank=rank, world_size=world_size):
            tokens += batch.counts[model.validation_part]
            if batch.size == 0:  # fewer rows than processes in the last batch: none for this one
                continue
            with _autocast(device, precision):
                output = model.loss(batch.to(device), state)
            state = output.state
            total += output.sums[model.validation_part].double()
    if world_size > 1:
        dist.all_reduce(total)
    loss = float(total) / max(tokens, 1)
    return {"loss": loss, "perplexity": math.exp(min(loss, 700.0)), "tokens": tokens}


def detach(value: Any) -> Any:
    """A carried state with every tensor cut from the graph (lists, tuples and dicts kept)."""
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, (list, tuple)):
        return type(value)(detach(item) for item in value)
    if isinstance(value, dict):
        return {key: detach(item) for key, item in value.items()}
    return value


def _moved(value: Any, device: torch.device | str) -> Any:
    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_moved(item, device) for item in value)
    if isinstance(value, dict):
        return {key: _moved(item, device) for key, item in value.items()}
    return value


def _autocast(device: torch.device, precision: str):
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")


class _LossModule(nn.Module):
    """What DistributedDataParallel wraps: ``forward`` is the model's ``loss``."""

    def __init__(self, model: TrainedModel):
        super().__init__()
        self.model = model

    def forward(self, batch: Batch, state: Any = None):
        output = self.model.loss(batch, state)
        return output.sums, output.counts, output.state


def _loss(module: nn.Module, batch: Batch, state: Any) -> LossOutput:
    if isinstance(module, TrainedModel):
        return module.loss(batch, state)
    sums, counts, state = module(batch, state)
    return LossOutput(sums, counts, state)


def _step_seed(seed: int, rank: int, step: int) -> int:
    return int(np.random.SeedSequence([seed, rank, step]).generate_state(1, dtype=np.uint64)[0] >> 1)


def _seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


# --- the run -------------------------------------------------------------------------------------------


def train(config: RunConfig, out: str | Path, *, resume: bool = False, progress: bool = True) -> TrainResult:
    """Train the model ``config`` describes, writing everything into the run folder ``out``.

    ``resume=True`` continues the run in ``out`` from its checkpoint (the same batches, the same
    numbers as a run that was never stopped), or starts it when it has none. Under ``torchrun``
    every process calls this; only the first writes files.
    """
    out = Path(out)
    processes, device = start_processes(config.train.device)
    try:
        _check_run(config, out, processes)
        with run_folder_lock(out, processes, device):
            result = _train(config, out, resume=resume, progress=progress, processes=processes, device=device)
        if processes.owns_group:
            processes.barrier()  # leave together: gloo may abort a process torn down while others talk
        return result
    finally:
        if processes.owns_group and dist.is_initialized():
            dist.destroy_process_group()


def _check_run(config: RunConfig, out: Path, processes: Processes) -> None:
    """What can be checked before the run folder is touched: the batch size and the input files."""
    if config.train.batch_size < processes.world_size:
        raise ConfigError(
            f"train.batch_size ({config.train.batch_size}) must be at least the number of processes "
            f"({processes.world_size})"
        )
    model = config.model.model
    check_inputs(config.data, out, model=model, reads=model_class(model).reads)


def _train(
    config: RunConfig, out: Path, *, resume: bool, progress: bool, processes: Processes, device: torch.device
) -> TrainResult:
    """The run in the locked folder ``out``: its folder, data and model, restored state, loop and record.

    A Ctrl-C (``KeyboardInterrupt``) anywhere in it removes what it left half-written and raises
    ``TrainingInterrupted``; the last checkpoint is whole (checkpoints are written atomically)."""
    run: _Run | None = None
    try:
        fresh = prepare_run_folder(config, out, processes, resume=resume)
        model, data = _build_model_and_data(config, out, processes, fresh=fresh)
        if processes.main:
            with no_space_reported(out, "the run's config"):
                write_run_config(config, out, world_size=processes.world_size)
        baseline = model.baseline_loss(data.train, data.valid)
        run = _restore(config, out, model, data, processes, device, fresh=fresh)
        run.open_log(baseline, progress=progress)
        try:
            stopped = run.loop()
            run.finish()
        except OSError as error:
            if error.errno not in NO_SPACE:
                raise
            raise TrainingError(
                f"training stopped at step {run.state.step}: no space left on the device of {out} "
                f"(writing {error.filename or 'a file'}); {run.last_good_checkpoint()}, intact. Free "
                "space, then resume (--resume)"
            ) from error
        finally:
            run.log.close()
        return _record_result(run, stopped, baseline)
    except KeyboardInterrupt:
        if processes.main:
            tidy_run_folder(out)
        raise TrainingInterrupted(out, None if run is None else run.state.step) from None


@dataclass
class _RunData:
    """The treebank files of a run, its training and validation corpora and the problems found in them."""

    paths: dict[str, Path]
    train: RowCorpus
    valid: RowCorpus
    problems: dict[str, DataProblems]


def _build_model_and_data(
    config: RunConfig, out: Path, processes: Processes, *, fresh: bool
) -> tuple[TrainedModel, _RunData]:
    """Write the data files (first process), read the treebanks, build the model, and prepare its two
    corpora."""
    paths = config.data.treebank_paths(out)
    try:
        with no_space_reported(out, "the run's data and vocabulary"):
            if processes.main:
                write_data_files(config.data, out, fresh=fresh)
            processes.barrier()
            vocab = run_vocabulary(config.data, out)
        treebanks = {
            role: read_treebank_positions(paths[role], pos_tags=config.data.pos_tags)
            for role in ("train", "valid")
        }
    except MissingPosTagError as error:
        raise error.with_hint(POS_TAGS_HINT) from None
    model = _build_model(config, treebanks["train"][0], vocab)
    prepared = {
        role: prepared_corpus(model, paths[role], treebank, on_problem=config.data.on_problem)
        for role, treebank in treebanks.items()
    }
    (train, train_problems), (valid, valid_problems) = prepared["train"], prepared["valid"]
    data = _RunData(paths, train, valid, {"train": train_problems, "valid": valid_problems})
    if len(data.train) == 0:
        raise TrainingError(f"{paths['train']}: no training rows (is the treebank empty?)")
    if len(data.valid) == 0:
        raise TrainingError(f"{paths['valid']}: no validation rows (is the treebank empty?)")
    return model, data


def _build_model(config: RunConfig, train_trees: list, vocab: Any) -> TrainedModel:
    """The recipe's model: vocabularies made for the training trees, weights drawn from ``train.seed``."""
    cls = model_class(config.model.model)
    _seed_everything(config.train.seed)
    vocabularies = cls.vocabularies_for(config.model, train_trees, vocab)
    return construct_model(cls, config.model, vocabularies)  # a hostile size is refused, not allocated


def _restore(
    config: RunConfig,
    out: Path,
    model: TrainedModel,
    data: _RunData,
    processes: Processes,
    device: torch.device,
    *,
    fresh: bool,
) -> _Run:
    """The run, its model on ``device`` with an optimiser: new, or as the checkpoint left them (resume)."""
    checkpoint_path = out / CHECKPOINT_FILE
    state = TrainingState(world_size=processes.world_size)
    carried = None
    optimizer_state = None
    if not fresh:
        checkpoint = load_checkpoint(checkpoint_path)
        model.load_weights(checkpoint.model, source=str(checkpoint_path))
        optimizer_state = checkpoint.optimizer
        state = checkpoint.state
        if any(value is not None for value in checkpoint.carried):
            if len(checkpoint.carried) != processes.world_size:
                raise TrainingError(
                    f"{checkpoint_path}: written by {len(checkpoint.carried)} processes whose models carry "
                    f"stream state; resume with {len(checkpoint.carried)} processes"
                )
            carried = _moved(checkpoint.carried[processes.rank], device)
        state.world_size = processes.world_size
    model.to(device)
    model.train()
    optimizer = make_optimizer(model, config.train)
    if optimizer_state is not None:
        optimizer.load_state_dict(optimizer_state)
    module: nn.Module = model
    if processes.world_size > 1:
        module = nn.parallel.DistributedDataParallel(_LossModule(model))
    checkpointed_step = None if fresh else state.step
    return _Run(
        config, out, processes, device, model, module, optimizer, data, state, carried, checkpointed_step
    )


@dataclass
class _Run:
    """A run under way: what its steps share, and the steps of its loop."""

    config: RunConfig
    out: Path
    processes: Processes
    device: torch.device
    model: TrainedModel
    module: nn.Module  # the model, or its data-parallel wrapper
    optimizer: torch.optim.Optimizer
    data: _RunData
    state: TrainingState
    carried: Any  # what the streams pass from step to step (Transformer-XL memory), or None
    checkpointed_step: int | None  # the step of the last checkpoint written or read
    carried_epoch: int = field(init=False)  # the epoch whose stream ``carried`` continues
    checkpoint_path: Path = field(init=False)
    weights: dict[str, float] = field(init=False)  # the model's ``loss_weights``
    n_batches: int = field(init=False)  # micro-batches per epoch
    total_steps: int = field(init=False)  # ``planned_steps``
    n_parameters: int = field(init=False)
    log: RunLog = field(init=False)  # ``open_log``
    started: float = field(init=False)  # ``_clock()`` when this process took the run up

    def __post_init__(self):
        self.started = _clock()
        self.carried_epoch = self.state.epoch
        self.checkpoint_path = self.out / CHECKPOINT_FILE
        self.weights = self.model.loss_weights
        self.n_batches = max(self.data.train.n_batches(self.config.train.batch_size), 1)
        self.total_steps = planned_steps(self.config.train, self.n_batches)
        self.n_parameters = sum(p.numel() for p in self.model.parameters())

    def open_log(self, baseline: tuple[str, float], *, progress: bool) -> None:
        """Start the log: the model's size, the baseline, the data's problems, the step resumed at."""
        state, processes, data = self.state, self.processes, self.data
        self.log = log = RunLog(
            self.out,
            start_step=state.step,
            total_steps=self.total_steps,
            enabled=processes.main,
            progress=progress,
        )
        log.note(
            f"{self.config.model.model}: {self.n_parameters:,} parameters; {len(data.train)} training rows, "
            f"{data.train.n_targets.get(self.model.validation_part, 0)} target {self.model.target_unit}s; "
            f"{processes.world_size} process(es) on "
            f"{self.device}"
        )
        log.note(
            f"{baseline[0]} baseline validation loss {baseline[1]:.4f} {self.model.loss_unit} "
            f"(perplexity {math.exp(baseline[1]):.2f})"
        )
        if self.model.loss_note is not None:
            log.note(f"note: {self.model.loss_note}")
        for role, problems in data.problems.items():
            for line in problems.lines():
                log.note(f"data.{role} {data.paths[role]}: {line}")
        if state.step:
            log.note(f"resuming at step {state.step} (epoch {state.epoch}, batch {state.batch})")

    def loop(self) -> str:
        """Take steps until ``max_steps``, early stopping, the last epoch or the time budget
        (``max_minutes``); returns which ended the run."""
        tc, state = self.config.train, self.state
        stream = _micro_batches(self.data.train, tc, state.epoch, state.batch, self.processes)
        interval = _Interval(state.log_interval, self.model.validation_part)
        while True:
            if state.step >= tc.max_steps:
                return "max_steps"
            if tc.patience is not None and state.bad_validations >= tc.patience:
                return "early_stopping"
            if tc.max_minutes is not None and self.out_of_time(tc.max_minutes):
                return "max_minutes"
            taken = list(_take(stream, tc.grad_accum))
            if not taken:
                return "epochs"
            self.step(taken, interval)

    def seconds_trained(self) -> float:
        """Wall-clock seconds of training: those of the checkpoint resumed from, and this process's since."""
        return self.state.train_seconds + (_clock() - self.started)

    def out_of_time(self, minutes: float) -> bool:
        """Whether ``minutes`` of training are spent (on any process: they all stop at the same step)."""
        spent = float(self.seconds_trained() >= 60.0 * minutes)
        return self.processes.sum([spent], self.device)[0] > 0

    def step(self, taken: list[tuple[int, int, Batch]], interval: _Interval) -> None:
        """One optimiser step over the micro-batches ``taken``; then the log, validation, checkpoint due."""
        tc, state, processes = self.config.train, self.state, self.processes
        _seed_everything(_step_seed(tc.seed, processes.rank, state.step))
        for group in self.optimizer.param_groups:
            group["lr"] = tc.lr * lr_factor(state.step, tc, self.total_steps)
        step_sums = self._accumulate(taken)
        parts = sorted(step_sums.sums)
        totals = dict(zip(parts, processes.sum([step_sums.sums[p] for p in parts], self.device), strict=True))
        loss = weighted_loss(totals, step_sums.counts, self.weights)
        clip_norm = tc.clip_norm if tc.clip_norm else math.inf
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip_norm))
        if not (math.isfinite(loss) and math.isfinite(grad_norm)):
            what = f"loss {loss}" if not math.isfinite(loss) else f"gradient norm {grad_norm}"
            self._skip_or_stop(taken, what)
            return
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        state.step += 1
        state.epoch, state.batch = taken[-1][0], taken[-1][1]
        state.skipped_in_a_row = []
        interval.add(totals, step_sums.counts, grad_norm)

        row: dict[str, Any] = {}
        if state.step % tc.log_every == 0:
            row = interval.row(self.weights)
        if state.step % tc.eval_every == 0:
            result = self.validate()
            row.update(valid_loss=result["loss"], valid_perplexity=result["perplexity"])
        if row:
            self.log.row(step=state.step, epoch=self._epoch(), lr=self.optimizer.param_groups[0]["lr"], **row)
        self.log.advance(1, loss=loss, tokens_per_s=interval.last_rate)
        if state.step % tc.checkpoint_every == 0:
            self.write_checkpoint()

    def _accumulate(self, taken: list[tuple[int, int, Batch]]) -> StepSums:
        """The gradients and sums of a step's micro-batches, which may straddle two epochs (a new
        epoch restarts the streams)."""
        step_sums = StepSums({}, {})
        for epoch, run in _runs_by_epoch(taken):
            if epoch != self.carried_epoch:
                self.carried, self.carried_epoch = None, epoch
            part = accumulate_gradients(
                self.module,
                [batch for _, _, batch in run],
                self.carried,
                weights=self.weights,
                device=self.device,
                precision=self.config.train.precision,
                world_size=self.processes.world_size,
            )
            self.carried = part.state
            _add(step_sums, part)
        return step_sums

    def _skip_or_stop(self, taken: list[tuple[int, int, Batch]], what: str) -> None:
        """A step whose ``what`` (its loss or gradient norm) is not finite: stop the run, or skip its
        batches (``train.on_nonfinite``) with no update, the optimiser's state untouched and the step
        not counted; the next step starts after these batches, with the streams' carried state dropped."""
        tc, state = self.config.train, self.state
        self.optimizer.zero_grad(set_to_none=True)
        batches = [[epoch, index - 1] for epoch, index, _ in taken]
        step, names = state.step + 1, _batch_names(batches)
        if tc.on_nonfinite == "stop":
            raise TrainingError(
                f"training stopped: the {what} at step {step} is not finite ({names}); the "
                f"parameters were not updated; {self.last_good_checkpoint()}. Try a lower train.lr or "
                "train.clip_norm, train.precision fp32, or train.on_nonfinite skip"
            )
        state.skipped_batches += len(batches)
        state.skipped_in_a_row.extend(batches)
        state.epoch, state.batch = taken[-1][0], taken[-1][1]
        self.carried = None
        if len(state.skipped_in_a_row) >= tc.max_skipped_batches:
            raise TrainingError(
                f"training stopped: {len(state.skipped_in_a_row)} batches in a row had a non-finite "
                f"loss or gradient norm (train.max_skipped_batches {tc.max_skipped_batches}): "
                f"{_batch_names(state.skipped_in_a_row)}; the last, at step {step}, the {what}; "
                f"{self.last_good_checkpoint()}. Try a lower train.lr or train.clip_norm"
            )
        self.log.note(
            f"skipped step {step} ({names}): the {what} is not finite; no update "
            f"({len(state.skipped_in_a_row)} in a row, {state.skipped_batches} in all)"
        )

    def validate(self) -> dict[str, float]:
        """The validation loss now; keeps the best model (``best/``), counts validations without progress."""
        state = self.state
        result = evaluate(
            self.model,
            self.data.valid,
            batch_size=self.config.train.batch_size,
            device=self.device,
            precision=self.config.train.precision,
            rank=self.processes.rank,
            world_size=self.processes.world_size,
        )
        if not math.isfinite(result["loss"]):
            raise TrainingError(
                f"training stopped: the validation loss at step {state.step} is {result['loss']}; "
                f"{self.last_good_checkpoint()}"
            )
        state.last_valid_loss, state.last_valid_step = result["loss"], state.step
        if state.best_valid_loss is None or result["loss"] < state.best_valid_loss:
            state.best_valid_loss, state.best_step, state.bad_validations = result["loss"], state.step, 0
            if self.processes.main:
                save_model_folder(self.model, self.out / BEST)
        else:
            state.bad_validations += 1
        self.log.note(
            f"step {state.step}: validation loss {result['loss']:.4f} {self.model.loss_unit} "
            f"(perplexity {result['perplexity']:.2f}); "
            f"best {state.best_valid_loss:.4f} at step {state.best_step}"
        )
        return result

    def write_checkpoint(self) -> None:
        """The checkpoint of this step (once), with every process's carried state."""
        if self.checkpointed_step == self.state.step:
            return
        self.checkpointed_step = self.state.step
        now = _clock()
        self.state.train_seconds += now - self.started
        self.started = now
        everyone = self.processes.gather(_moved(self.carried, "cpu"))
        if self.processes.main:
            save_checkpoint(
                self.checkpoint_path,
                model=self.model.state_dict(),
                optimizer=self.optimizer.state_dict(),
                state=self.state,
                carried=everyone,
            )

    def finish(self) -> None:
        """After the last step: validate (unless just done), write the checkpoint and the ``last/`` model."""
        state = self.state
        if state.step > 0 and state.last_valid_step != state.step:
            result = self.validate()
            self.log.row(
                step=state.step,
                epoch=self._epoch(),
                valid_loss=result["loss"],
                valid_perplexity=result["perplexity"],
            )
        if state.step > 0:
            self.write_checkpoint()
        if self.processes.main and state.step > 0:
            save_model_folder(self.model, self.out / LAST)
            if not (self.out / BEST).is_dir():
                save_model_folder(self.model, self.out / BEST)

    def last_good_checkpoint(self) -> str:
        """Where a stopped run can be resumed from, for the error that stops it."""
        if not self.checkpoint_path.is_file():
            return "no checkpoint was written yet"
        path = self.checkpoint_path
        return f"the last good checkpoint is {path} (step {checkpoint_step(path)})"

    def _epoch(self) -> float:
        return round(self.state.epoch + self.state.batch / self.n_batches, 4)


def _record_result(run: _Run, stopped: str, baseline: tuple[str, float]) -> TrainResult:
    """How the run ended, also written to ``training.json`` by the first process."""
    state, data, config = run.state, run.data, run.config
    part = run.model.validation_part
    result = TrainResult(
        run=run.out,
        steps=state.step,
        stopped=stopped,
        best_valid_loss=state.best_valid_loss,
        best_step=state.best_step,
        last_valid_loss=state.last_valid_loss,
        baseline_valid_loss=baseline[1],
        model=run.model,
        baseline=baseline[0],
        skipped_batches=state.skipped_batches,
        train_seconds=round(run.seconds_trained(), 1),
        data_problems={role: problems.to_dict() for role, problems in data.problems.items()},
    )
    if run.processes.main:
        record = result_record(
            "training",
            {
                "model": config.model.model,
                "steps": state.step,
                "stopped": stopped,
                "best_valid_loss": state.best_valid_loss,
                "best_valid_perplexity": result.best_valid_perplexity,
                "best_step": state.best_step,
                "last_valid_loss": state.last_valid_loss,
                "baseline": baseline[0],
                "baseline_valid_loss": baseline[1],
                "valid_targets": data.valid.n_targets.get(part, 0),
                "train_targets": data.train.n_targets.get(part, 0),
                "parameters": run.n_parameters,
                "loss_unit": f"nats per target {run.model.target_unit} ({part} part)",
                "skipped_batches": state.skipped_batches,
                "train_seconds": result.train_seconds,
                "data_problems": result.data_problems,
            },
            inputs={role: path for role, path in data.paths.items()},
            options={"config": config.to_dict(), "world_size": run.processes.world_size},
        )
        write_result(run.out / RESULT_FILE, record)
    return result


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW; weight decay on matrices and embedding tables, not on biases or normalisation gains.

    The fused implementation (one kernel over all parameters) is used: on the CPU its step took
    about half the time of the default one for a PTB-size model (docs/performance.md)."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    groups = [group for group in groups if group["params"]]
    return torch.optim.AdamW(groups, lr=config.lr, betas=config.betas, fused=True)


# --- helpers of the loop -------------------------------------------------------------------------------


def _micro_batches(
    corpus: RowCorpus, config: TrainConfig, epoch: int, start: int, processes: Processes
) -> Iterator[tuple[int, int, Batch]]:
    """``(epoch, index of the next batch, batch)`` from batch ``start`` of ``epoch`` on, epoch after epoch."""
    while config.epochs is None or epoch < config.epochs:
        index = start
        for batch in corpus.batches(
            config.batch_size,
            seed=config.seed,
            epoch=epoch,
            start=start,
            rank=processes.rank,
            world_size=processes.world_size,
        ):
            index += 1
            if batch.size == 0:
                # A global batch with fewer rows than processes left none to this one; it still takes
                # part in the gradient averaging, with a row of the corpus whose loss is multiplied by 0.
                row = next(corpus.batches(1, shuffle=False))
                batch = Batch(row.tensors, batch.counts, batch.rows)
            yield epoch, index, batch
        epoch, start = epoch + 1, 0


def _take(stream: Iterator, n: int) -> Iterator:
    for _ in range(n):
        item = next(stream, None)
        if item is None:
            return
        yield item


def _runs_by_epoch(taken: list[tuple[int, int, Batch]]) -> list[tuple[int, list]]:
    runs: list[tuple[int, list]] = []
    for item in taken:
        if runs and runs[-1][0] == item[0]:
            runs[-1][1].append(item)
        else:
            runs.append((item[0], [item]))
    return runs


def _add(total: StepSums, part: StepSums) -> None:
    for name, value in part.sums.items():
        total.sums[name] = total.sums.get(name, 0.0) + value
    for name, value in part.counts.items():
        total.counts[name] = total.counts.get(name, 0) + value


class _Interval:
    """Training numbers since the last ``log.csv`` row. The sums live in ``numbers`` (a dict of the
    checkpointed state), so that a resumed run writes the rows an uninterrupted one would."""

    def __init__(self, numbers: dict[str, Any], part: str = "lm"):
        self.numbers = numbers
        self.part = part  # the loss part whose targets the rate counts (the model's validation part)
        self._clear()
        self.last_rate: float | None = None
        self._rate_tokens, self._rate_start = 0, time.perf_counter()

    def _clear(self) -> None:
        if not self.numbers:
            self.numbers.update(sums={}, counts={}, grad_norm_sum=0.0, steps=0)
        self.tokens, self.start = 0, time.perf_counter()

    def add(self, sums: dict[str, float], counts: dict[str, int], grad_norm: float) -> None:
        numbers = self.numbers
        for part, value in sums.items():
            numbers["sums"][part] = numbers["sums"].get(part, 0.0) + value
        for part, value in counts.items():
            numbers["counts"][part] = numbers["counts"].get(part, 0) + value
        numbers["grad_norm_sum"] += grad_norm
        numbers["steps"] += 1
        self.tokens += counts.get(self.part, 0)
        self._rate_tokens += counts.get(self.part, 0)
        now = time.perf_counter()
        if now - self._rate_start >= 1.0 or self.last_rate is None:
            self.last_rate = self._rate_tokens / max(now - self._rate_start, 1e-9)
            self._rate_tokens, self._rate_start = 0, now

    def row(self, weights: dict[str, float]) -> dict[str, Any]:
        numbers = self.numbers
        row = {
            "train_loss": weighted_loss(numbers["sums"], numbers["counts"], weights),
            "tokens_per_s": round(self.tokens / max(time.perf_counter() - self.start, 1e-9), 1),
            "grad_norm": numbers["grad_norm_sum"] / max(numbers["steps"], 1),
        }
        self.numbers.clear()
        self._clear()
        return row


def _batch_names(batches: list[list[int]]) -> str:
    """``epoch 0, batch 8; ...`` (0-based batch indices in the epoch's order), long lists shortened."""
    names = [f"epoch {epoch}, batch {batch}" for epoch, batch in batches]
    if len(names) > 6:
        names = [*names[:3], f"... {len(names) - 5} more", *names[-2:]]
    return "; ".join(names)
