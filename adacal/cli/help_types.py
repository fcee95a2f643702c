"""Value types in `--help` as the words command-line users know (TEXT, INTEGER, NUMBER, PATH, FILE, FOLDER).

Typer prints Python annotations (`<str>`, `<list[Path]>`, `<bool>` beside a flag). Every option a command declares
without its own `metavar=` gets the word for its click type; flags show none; an argument keeps its name (its
metavar) and shows the word in the type column, with "..." when it takes several values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args


_WORDS = {int: "INTEGER", float: "NUMBER", str: "TEXT", bool: "BOOLEAN", Path: "PATH"}
_PATH_WORDS = {"file": "FILE", "dir": "FOLDER", "path": "PATH"}


def type_word(param: Any) -> str | None:
    """The word for a parameter's value type, "" for a flag, None where Typer's own label is already plain."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return ""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:  # Typer >= 0.2x: its own parameter classes describe the annotation
        several = descriptor.is_list
        if descriptor.is_choice or descriptor.is_tuple or descriptor.is_datetime:
            return None  # Typer lists the choices / formats itself
        if descriptor.is_path:
            word = _PATH_WORDS.get(descriptor.path_type, "PATH")
        else:
            annotation = get_args(descriptor.annotation)[0] if several else descriptor.annotation
            word = _WORDS.get(annotation)
    else:  # older Typer: plain click parameters, whose types carry a name
        several = param.nargs != 1
        kind = param.type
        if getattr(kind, "name", "") == "path":
            word = "FILE" if not kind.dir_okay else "FOLDER" if not kind.file_okay else "PATH"
        else:
            word = {"integer": "INTEGER", "float": "NUMBER", "text": "TEXT", "boolean": "BOOLEAN"}.get(kind.name)
    if word is None:
        return None
    return f"{word}..." if several else word


def readable_types(command: Any) -> Any:
    """Set the help type words on `command`'s parameters and, for a group, on its subcommands'; returns `command`."""
    for param in getattr(command, "params", ()):
        word = type_word(param)
        if word is None:
            continue
        if getattr(param, "param_type_name", "") == "argument":
            # The argument's metavar is its displayed name, so the type column is replaced on this instance only.
            param.display_type_rich = lambda ctx, word=word: word
        elif param.metavar is None:
            param.metavar = word
    make_help_option = getattr(command, "get_help_option", None)
    if make_help_option is not None and not getattr(make_help_option, "readable", False):
        # click builds --help when a context asks for it, so its flag is quieted as it is built.
        def help_option(ctx: Any) -> Any:
            option = make_help_option(ctx)
            if option is not None and getattr(option, "metavar", "") is None:
                option.metavar = ""
            return option

        help_option.readable = True  # type: ignore[attr-defined]
        command.get_help_option = help_option
    for sub in getattr(command, "commands", {}).values():
        readable_types(sub)
    return command
