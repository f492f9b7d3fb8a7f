"""Dataset download: the real files served from a loopback HTTP server laid out like the shared data.

Nothing here reaches the internet: every download goes to a mirror on 127.0.0.1 (or to a closed
port there). The registry check compares each entry's size and sha256 with the shared copies.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import socket
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from syntaxlm.data.download import (
    DATASETS,
    MIRROR_VARIABLE,
    ChecksumError,
    UnknownDatasetError,
    describe_datasets,
    download,
    file_url,
    get_dataset,
    list_datasets,
)
from syntaxlm.errors import DownloadError, SyntaxlmError


@dataclass
class Request:
    path: str
    range: str | None
    status: int
    body_bytes: int


@dataclass
class Mirror:
    """A loopback server over a folder; ``requests`` logs what it was asked and what it sent."""

    url: str
    requests: list[Request] = field(default_factory=list)


class _MirrorHandler(BaseHTTPRequestHandler):
    """Serves files under ``server.root``; honours ``Range: bytes=N-`` / ``bytes=N-M`` unless told not to.

    ``server.break_after`` (bytes) makes the server announce the full length, send only that many
    bytes and drop the connection, as a network failure would.
    """

    def do_GET(self):
        server = self.server
        file = (server.root / self.path.lstrip("/")).resolve()
        if not file.is_relative_to(server.root) or not file.is_file():
            self._send(HTTPStatus.NOT_FOUND, b"")
            return
        data = file.read_bytes()
        requested = self.headers.get("Range")
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", requested or "")
        if match is None or not server.honour_range:
            self._send(HTTPStatus.OK, data)
            return
        start = int(match[1])
        end = int(match[2]) if match[2] else len(data) - 1
        if start >= len(data):
            unsatisfiable = {"Content-Range": f"bytes */{len(data)}"}
            self._send(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, b"", unsatisfiable)
            return
        end = min(end, len(data) - 1)
        content_range = {"Content-Range": f"bytes {start}-{end}/{len(data)}"}
        self._send(HTTPStatus.PARTIAL_CONTENT, data[start : end + 1], content_range)

    def _send(self, status: HTTPStatus, body: bytes, headers: dict[str, str] | None = None):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes" if self.server.honour_range else "none")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        sent = body if self.server.break_after is None else body[: self.server.break_after]
        # logged before the body goes out, so the log is complete once the client has the bytes
        self.server.log.append(Request(self.path, self.headers.get("Range"), int(status), len(sent)))
        self.wfile.write(sent)
        if len(sent) < len(body):
            self.close_connection = True

    def log_message(self, format, *args):  # keep the test output quiet
        pass


@pytest.fixture
def serve():
    """``serve(folder, honour_range=True, break_after=None) -> Mirror``; servers stop after the test."""
    servers = []

    def start(root: Path, *, honour_range: bool = True, break_after: int | None = None) -> Mirror:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _MirrorHandler)
        server.root = Path(root).resolve()
        server.honour_range = honour_range
        server.break_after = break_after
        mirror = Mirror(url=f"http://127.0.0.1:{server.server_address[1]}/")
        server.log = mirror.requests
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(server)
        return mirror

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _copy_layout(shared_data: Path, dataset_name: str, root: Path) -> Path:
    """Copy one dataset's files from the shared data into ``root``, keeping the mirror layout."""
    for remote in get_dataset(dataset_name).files:
        target = root / remote.mirror_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared_data / remote.mirror_path, target)
    return root


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the registry ----------------------------------------------------------------------------


def test_registry_holds_the_permissive_public_sets():
    names = ["ud-english-ewt", "ud-english-pud", "ud-english-pronouns", "blimp", "syntaxgym"]
    assert list_datasets() == names
    counts = {name: len(dataset.files) for name, dataset in DATASETS.items()}
    assert counts == {
        "ud-english-ewt": 4,  # train, dev, test, LICENSE.txt
        "ud-english-pud": 2,
        "ud-english-pronouns": 2,
        "blimp": 67,
        "syntaxgym": 35,  # 34 suites + LICENSE
    }
    for dataset in DATASETS.values():
        commit = re.search(r"/tree/([0-9a-f]{40})$", dataset.source)[1]
        paths = [remote.path for remote in dataset.files]
        assert len(set(paths)) == len(paths), dataset.name
        for remote in dataset.files:
            assert remote.url.startswith("https://raw.githubusercontent.com/")
            assert f"/{commit}/" in remote.url
            assert re.fullmatch(r"[0-9a-f]{64}", remote.sha256)
            assert "/" not in remote.path and not remote.path.startswith(".")


def test_registry_matches_the_shared_copies(shared_data):
    """Every entry's mirror_path exists in the shared data with the recorded size and sha256."""
    for dataset in DATASETS.values():
        for remote in dataset.files:
            copy = shared_data / remote.mirror_path
            assert copy.is_file(), remote.mirror_path
            data = copy.read_bytes()
            assert (len(data), _sha256(data)) == (remote.size, remote.sha256), remote.mirror_path


def test_unknown_name_lists_the_known_ones(tmp_path):
    with pytest.raises(UnknownDatasetError) as caught:
        download("blimp2", tmp_path, mirror="http://127.0.0.1:9/")
    assert isinstance(caught.value, SyntaxlmError)
    for name in DATASETS:
        assert name in str(caught.value)
    assert not any(tmp_path.iterdir())


def test_summary_names_every_dataset_with_its_licence_and_source():
    text = describe_datasets()
    for dataset in DATASETS.values():
        assert dataset.name in text and dataset.licence in text and dataset.source in text


def test_mirror_url_follows_the_shared_layout():
    train = get_dataset("ud-english-ewt").files[1]
    assert train.path == "en_ewt-ud-train.conllu"
    assert file_url(train) == train.url
    assert (
        file_url(train, "http://host/data/")
        == file_url(train, "http://host/data")
        == "http://host/data/ud_english/ewt/en_ewt-ud-train.conllu"
    )


# --- downloading -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ud-english-pud", "syntaxgym"])
def test_download_lands_files_identical_to_the_originals(shared_data, serve, tmp_path, name):
    mirror = serve(shared_data)
    paths = download(name, tmp_path / name, mirror=mirror.url, progress=False)
    dataset = get_dataset(name)
    assert paths == [tmp_path / name / remote.path for remote in dataset.files]
    for remote, path in zip(dataset.files, paths):
        assert path.read_bytes() == (shared_data / remote.mirror_path).read_bytes()
    assert sorted(p.name for p in (tmp_path / name).iterdir()) == sorted(r.path for r in dataset.files)
    assert len(mirror.requests) == len(dataset.files)
    assert all(request.range is None and request.status == 200 for request in mirror.requests)


def test_second_download_fetches_nothing(shared_data, serve, tmp_path):
    mirror = serve(shared_data)
    first = download("ud-english-pronouns", tmp_path, mirror=mirror.url, progress=False)
    assert len(mirror.requests) == 2
    mirror.requests.clear()
    assert download("ud-english-pronouns", tmp_path, mirror=mirror.url, progress=False) == first
    assert mirror.requests == []


def test_a_changed_file_is_fetched_again(shared_data, serve, tmp_path):
    mirror = serve(shared_data)
    test_file = download("ud-english-pronouns", tmp_path, mirror=mirror.url, progress=False)[1]
    test_file.write_text("# edited\n")
    mirror.requests.clear()
    download("ud-english-pronouns", tmp_path, mirror=mirror.url, progress=False)
    original = "ud_english/pronouns/en_pronouns-ud-test.conllu"
    assert [request.path for request in mirror.requests] == ["/" + original]
    assert test_file.read_bytes() == (shared_data / original).read_bytes()


def test_mirror_from_the_environment(shared_data, serve, tmp_path, monkeypatch):
    mirror = serve(shared_data)
    monkeypatch.setenv(MIRROR_VARIABLE, mirror.url)
    download("ud-english-pronouns", tmp_path, progress=False)
    assert len(mirror.requests) == 2


def test_mirror_may_be_a_file_url(shared_data, tmp_path):
    paths = download("ud-english-pronouns", tmp_path, mirror=shared_data.as_uri(), progress=False)
    original = shared_data / "ud_english/pronouns/en_pronouns-ud-test.conllu"
    assert paths[1].read_bytes() == original.read_bytes()


def test_progress_bar_counts_bytes(shared_data, serve, tmp_path, capsys):
    mirror = serve(shared_data)
    download("ud-english-pronouns", tmp_path, mirror=mirror.url, progress=True)
    err = capsys.readouterr().err
    assert "ud-english-pronouns" in err and "100%" in err


def test_corrupted_file_is_rejected(shared_data, serve, tmp_path):
    root = _copy_layout(shared_data, "ud-english-pud", tmp_path / "mirror")
    corrupted = root / "ud_english/pud/en_pud-ud-test.conllu"
    data = bytearray(corrupted.read_bytes())
    data[len(data) // 2] ^= 0x01
    corrupted.write_bytes(data)
    mirror = serve(root)
    dest = tmp_path / "pud"

    with pytest.raises(ChecksumError) as caught:
        download("ud-english-pud", dest, mirror=mirror.url, progress=False)

    remote = get_dataset("ud-english-pud").files[1]
    message = str(caught.value)
    assert isinstance(caught.value, DownloadError)
    assert remote.path in message
    assert file_url(remote, mirror.url) in message
    assert remote.sha256 in message and _sha256(bytes(data)) in message
    assert caught.value.actual_sha256 == _sha256(bytes(data))
    assert not (dest / remote.path).exists()
    assert not (dest / (remote.path + ".part")).exists()
    assert (dest / "LICENSE.txt").is_file()  # files verified before the bad one stay


def test_resume_from_a_partial_file(shared_data, serve, tmp_path):
    mirror = serve(shared_data)
    remote = get_dataset("ud-english-pud").files[1]
    original = (shared_data / remote.mirror_path).read_bytes()
    half = len(original) // 2
    tmp_path.joinpath(remote.path + ".part").write_bytes(original[:half])

    download("ud-english-pud", tmp_path, mirror=mirror.url, progress=False)

    request = next(r for r in mirror.requests if r.path.endswith(remote.path))
    assert request.range == f"bytes={half}-"
    assert request.status == 206 and request.body_bytes == len(original) - half
    assert tmp_path.joinpath(remote.path).read_bytes() == original
    assert not tmp_path.joinpath(remote.path + ".part").exists()


def test_server_ignoring_range_still_gives_the_right_file(shared_data, serve, tmp_path):
    mirror = serve(shared_data, honour_range=False)
    remote = get_dataset("ud-english-pud").files[1]
    original = (shared_data / remote.mirror_path).read_bytes()
    tmp_path.joinpath(remote.path + ".part").write_bytes(original[: len(original) // 3])

    download("ud-english-pud", tmp_path, mirror=mirror.url, progress=False)

    request = next(r for r in mirror.requests if r.path.endswith(remote.path))
    assert request.range is not None and request.status == 200
    assert tmp_path.joinpath(remote.path).read_bytes() == original


def test_broken_transfer_keeps_the_part_and_the_next_run_resumes(shared_data, serve, tmp_path):
    remote = get_dataset("ud-english-pud").files[1]
    original = (shared_data / remote.mirror_path).read_bytes()
    broken = serve(shared_data, break_after=100_000)

    with pytest.raises(DownloadError) as caught:
        download("ud-english-pud", tmp_path, mirror=broken.url, progress=False)
    assert not isinstance(caught.value, ChecksumError)
    assert file_url(remote, broken.url) in str(caught.value)
    part = tmp_path / (remote.path + ".part")
    assert not (tmp_path / remote.path).exists()
    assert part.read_bytes() == original[: part.stat().st_size]
    kept = part.stat().st_size
    assert kept > 0

    mirror = serve(shared_data)
    download("ud-english-pud", tmp_path, mirror=mirror.url, progress=False)
    assert [r.range for r in mirror.requests if r.path.endswith(remote.path)] == [f"bytes={kept}-"]
    assert (tmp_path / remote.path).read_bytes() == original


def test_stale_complete_part_is_replaced(shared_data, serve, tmp_path):
    """A .part as long as the file but with other bytes cannot be resumed; it is fetched afresh."""
    mirror = serve(shared_data)
    remote = get_dataset("ud-english-pronouns").files[1]
    tmp_path.joinpath(remote.path + ".part").write_bytes(b"x" * remote.size)
    download("ud-english-pronouns", tmp_path, mirror=mirror.url, progress=False)
    assert [r.range for r in mirror.requests if r.path.endswith(remote.path)] == [None]
    assert _sha256(tmp_path.joinpath(remote.path).read_bytes()) == remote.sha256


def test_missing_file_on_the_mirror(serve, tmp_path):
    mirror = serve(tmp_path / "empty-mirror")
    with pytest.raises(DownloadError, match=r"HTTP 404") as caught:
        download("ud-english-pronouns", tmp_path / "out", mirror=mirror.url, progress=False)
    assert f"{mirror.url}ud_english/pronouns/LICENSE.txt" in str(caught.value)


def test_connection_failure_names_the_url(tmp_path):
    with socket.socket() as probe:  # a port that was free a moment ago and has no listener now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mirror = f"http://127.0.0.1:{port}"
    with pytest.raises(DownloadError) as caught:
        download("syntaxgym", tmp_path, mirror=mirror, progress=False, timeout=5)
    first = get_dataset("syntaxgym").files[0]
    assert file_url(first, mirror) in str(caught.value)
    assert not any(tmp_path.iterdir())


def test_part_longer_than_the_served_file_starts_over(shared_data, serve, tmp_path):
    """A 416 answer to the range request restarts the transfer; here the mirror's file is short."""
    root = _copy_layout(shared_data, "ud-english-pronouns", tmp_path / "mirror")
    remote = get_dataset("ud-english-pronouns").files[1]
    served = root / remote.mirror_path
    served.write_bytes(served.read_bytes()[:1000])
    mirror = serve(root)
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / (remote.path + ".part")).write_bytes(served.read_bytes())

    with pytest.raises(ChecksumError, match=r"\(1000 bytes\)"):
        download("ud-english-pronouns", dest, mirror=mirror.url, progress=False)
    assert [(r.range, r.status) for r in mirror.requests if r.path.endswith(remote.path)] == [
        ("bytes=1000-", 416),
        (None, 200),
    ]
    assert not (dest / (remote.path + ".part")).exists()


def test_a_part_file_that_is_a_link_is_refused_and_its_target_untouched(shared_data, serve, tmp_path):
    mirror = serve(shared_data)
    remote = get_dataset("ud-english-pud").files[1]
    victim = tmp_path / "victim.txt"
    victim.write_text("not to be overwritten\n")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / (remote.path + ".part")).symlink_to(victim)
    with pytest.raises(DownloadError, match=r"\.part is a symbolic link.*remove it"):
        download("ud-english-pud", dest, mirror=mirror.url, progress=False)
    assert victim.read_text() == "not to be overwritten\n"
    assert not any(r.path.endswith(remote.path) for r in mirror.requests)  # refused before any transfer


def test_a_link_that_appears_after_the_check_is_refused_when_the_part_is_opened(tmp_path):
    from syntaxlm.data.download import _open_part

    remote = get_dataset("ud-english-pud").files[1]
    victim = tmp_path / "victim.txt"
    victim.write_text("kept\n")
    part = tmp_path / "file.part"
    part.symlink_to(victim)
    for append in (False, True):
        with pytest.raises(DownloadError, match="is a symbolic link"):
            _open_part(remote, part, append=append)
    assert victim.read_text() == "kept\n"
