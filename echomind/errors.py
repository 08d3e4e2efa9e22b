"""One small exception hierarchy: the engine raises these, only the UI/CLI turns them into words on screen.

Every message says what happened and what the user can do, so the UI can show it verbatim.
"""


class EchoMindError(Exception):
    """Base for every error the engine means a user to read."""


class RejectedFile(EchoMindError):
    """A file we will not ingest; the store is left untouched."""


class UnsupportedFileType(RejectedFile):
    pass


class FileTooLarge(RejectedFile):
    pass


class EmptyDocument(RejectedFile):
    pass


class PasswordRequired(RejectedFile):
    """The PDF is encrypted and the empty password does not open it (or the given one is wrong)."""

    def __init__(self, message: str, wrong_password: bool = False):
        super().__init__(message)
        self.wrong_password = wrong_password


class NoExtractableText(RejectedFile):
    pass


class CorruptFile(RejectedFile):
    pass


class UnsafeArchive(RejectedFile):
    """A zip-based office file that would expand beyond our limits (zip bomb)."""


class ParseTimeout(RejectedFile):
    pass


class EmbedderError(EchoMindError):
    """The embedding model could not embed; at query time retrieval falls back to BM25 only."""


class NotFound(EchoMindError):
    pass


class LLMError(EchoMindError):
    """The language model failed, timed out or is not reachable; the user's message is kept."""
