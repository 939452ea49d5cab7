"""Bad input gives one clear line naming the file: the check every reader of a user's file passes."""

from collections.abc import Callable
from pathlib import Path

import pytest


def one_line_error(path: Path, text: str, read: Callable[[Path], object], error: type[Exception]) -> str:
    """What `read` raises (an `error`) on a file holding `text`, checked to be one line that starts
    with the file's path."""
    path.write_text(text)
    with pytest.raises(error) as caught:
        read(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and "\n" not in message, message
    return message
