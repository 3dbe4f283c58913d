"""A chart of a session's context over time: Claude Code's real usage, its compactions, and the
same curve with endless mode's observations in place of tool results. matplotlib is an optional
extra (``pip install 'infinite-context-brain[plot]'``), imported only here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import install_command
from ..errors import ConfigError, InvalidInput

if TYPE_CHECKING:
    from .service import TranscriptStats

FORMATS = {".png", ".svg", ".pdf"}


def plot_context(stats: TranscriptStats, output: Path | str) -> Path:
    out = Path(output).expanduser()
    if out.suffix.lower() not in FORMATS:
        raise InvalidInput(
            "plot", f"{out.name} has no known image suffix", fix="end the path in .png, .svg or .pdf"
        )
    if not out.parent.is_dir():
        raise InvalidInput("plot", f"folder {out.parent} does not exist", fix="create it first")
    if not stats.curve:
        raise InvalidInput(
            "transcript", "has no assistant replies with usage numbers", fix="plot a Claude Code session"
        )
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only; never open a window
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("plotting needs matplotlib", fix=install_command(extra="plot")) from None

    lines = [p.line for p in stats.curve]
    fig, ax = plt.subplots(figsize=(10, 4.8), dpi=110)
    try:
        ax.plot(lines, [p.tokens for p in stats.curve], label="context (Claude Code usage)", color="#c0392b")
        ax.plot(
            lines,
            [p.endless_tokens for p in stats.curve],
            label="with endless mode",
            color="#2471a3",
            linestyle="--",
        )
        for i, compaction in enumerate(stats.compactions):
            ax.axvline(
                compaction.line,
                color="#7f8c8d",
                linestyle=":",
                label="compaction" if i == 0 else None,
            )
        ax.axhline(stats.context_window, color="#27ae60", linewidth=0.8, label="context window")
        ax.set_xlabel("transcript line")
        ax.set_ylabel("tokens in context")
        saved = f"{stats.reduction:.0%} of tool-output tokens removed"
        ax.set_title(f"{Path(stats.transcript).name}: {saved}")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _p: f"{v / 1000:.0f}k"))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", fontsize="small")
        fig.tight_layout()
        fig.savefig(out)
    finally:
        plt.close(fig)
    return out
