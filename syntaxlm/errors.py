"""Typed errors. Every failure caused by user input names where it happened and what was expected."""

from __future__ import annotations

from pathlib import Path


class SyntaxlmError(Exception):
    """Base class of every error syntaxlm raises on purpose."""


class InputFormatError(SyntaxlmError, ValueError):
    """A file (or string) does not follow its format.

    The message reads like a compiler's: ``path:line:column: what is wrong; expected ...``.
    ``line`` and ``column`` are 1-based; ``sentence`` is the 0-based index of the tree or
    sentence in its file, when known.
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        column: int | None = None,
        sentence: int | None = None,
        expected: str | None = None,
    ):
        self.problem = problem
        self.path = str(path) if path is not None else None
        self.line = line
        self.column = column
        self.sentence = sentence
        self.expected = expected
        super().__init__(self._render())

    @property
    def location(self) -> str:
        parts = [self.path or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def _render(self) -> str:
        text = f"{self.location}: {self.problem}"
        if self.expected:
            text += f"; expected {self.expected}"
        if self.sentence is not None:
            text += f" (sentence {self.sentence})"
        return text


class TreeFormatError(InputFormatError):
    """Bad Penn Treebank bracket text."""


class MissingPosTagError(TreeFormatError):
    """A word not alone under a POS tag in trees read as Penn style: often trees without POS tags
    (Choe–Charniak) read with POS tags on. ``hint``, at the end of the message, says how to read
    them; ``with_hint`` gives the error with the hint of the command or config at hand."""

    def __init__(self, problem: str, *, hint: str | None = None, **where):
        self.hint = hint
        super().__init__(problem, **where)

    def _render(self) -> str:
        text = super()._render()
        return f"{text}; {self.hint}" if self.hint else text

    def with_hint(self, hint: str) -> MissingPosTagError:
        return MissingPosTagError(
            self.problem,
            hint=hint,
            path=self.path,
            line=self.line,
            column=self.column,
            sentence=self.sentence,
            expected=self.expected,
        )


class ConlluFormatError(InputFormatError):
    """Bad CoNLL-U text, or a dependency graph that is not a tree."""


class SuiteFormatError(InputFormatError):
    """A SyntaxGym-format suite that does not follow the schema."""


def in_sentence(sentence: int | None) -> str:
    """The `` (sentence N)`` suffix of a message, or nothing when the sentence is not known."""
    return "" if sentence is None else f" (sentence {sentence})"


class SentenceError(SyntaxlmError, ValueError):
    """Numbers or structures given for one sentence that cannot be used; names the sentence (0-based)."""

    def __init__(self, problem: str, *, sentence: int | None = None):
        self.problem = problem
        self.sentence = sentence
        super().__init__(problem + in_sentence(sentence))


class TreeError(SyntaxlmError, ValueError):
    """A well-formed tree that cannot undergo the requested operation (e.g. it has no POS tags)."""


class NoSpaceError(SyntaxlmError, OSError):
    """A write failed because the disk (or the user's quota) is full: an ``OSError`` with the write's
    ``errno`` (ENOSPC, EDQUOT) whose message names where and what to do (``files.no_space_reported``)."""

    def __str__(self) -> str:
        return str(self.strerror)


class OutputIsInputError(SyntaxlmError, ValueError):
    """An output would replace a file the same command reads (``files.refuse_overwriting``)."""


class DownloadError(SyntaxlmError):
    """A dataset could not be fetched, or its contents failed verification."""


class ActionSequenceError(SyntaxlmError, ValueError):
    """An action sequence that does not describe a tree; the message names the action and sentence."""

    def __init__(self, problem: str, *, action: int | None = None, sentence: int | None = None):
        self.problem = problem
        self.action = action
        self.sentence = sentence
        where = [] if action is None else [f"action {action}"]
        if sentence is not None:
            where.append(f"sentence {sentence}")
        super().__init__(f"{problem} ({', '.join(where)})" if where else problem)


class ConfigError(SyntaxlmError, ValueError):
    """A configuration with an unknown key, a value of the wrong type or an impossible setting."""


class TrainingError(SyntaxlmError):
    """Training cannot go on: the loss became NaN or infinite, a corpus is empty, a resume does not fit."""


class StageError(SyntaxlmError):
    """A stage of a long job (run in a worker process) failed on its input; names the stage."""


class SizeError(SyntaxlmError, ValueError):
    """A size a user asked for that the machine cannot hold (synthetic sentences, the k best trees,
    samples, a beam; ``syntaxlm.memory.check_size``), refused before anything is allocated.
    ``name`` is the argument, ``value`` what was asked, ``most`` the largest value that fits (0:
    none does); ``problem`` says what was asked without the argument's name, so that a command
    line can name its own option instead."""

    def __init__(self, name: str, value: int, most: int, problem: str):
        self.name = name
        self.value = value
        self.most = most
        self.problem = problem
        super().__init__(f"{name}={problem}")

    def __reduce__(self):  # pickled whole (from a worker process), not as its message alone
        return type(self), (self.name, self.value, self.most, self.problem)
