"""A small MCP server to give a worker: notes kept in memory, over stdio.

Run it alone with ``python examples/mcp/notes_server.py`` (it speaks MCP on
stdin/stdout), or let a team start it::

    MCPServer.stdio([sys.executable, "examples/mcp/notes_server.py"], prefix="notes_")
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app: MCPServer = MCPServer("notes", log_level="ERROR")
_notes: dict[str, str] = {"groceries": "oats, coffee, lemons"}


@app.tool()
def list_notes() -> list[str]:
    """The titles of all notes."""
    return sorted(_notes)


@app.tool()
def read_note(title: str) -> str:
    """The text of the note called ``title``."""
    if title not in _notes:
        raise ToolError(f"no note called {title!r}; the notes are: {', '.join(sorted(_notes))}")
    return _notes[title]


@app.tool()
def write_note(title: str, text: str) -> str:
    """Create or replace the note called ``title``."""
    _notes[title] = text
    return f"saved {title!r}"


if __name__ == "__main__":
    app.run()
