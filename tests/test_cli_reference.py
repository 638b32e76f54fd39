"""docs/cli.md is generated from the parser and committed (so that it reads right where the
repository is browsed): it must be what the generator writes from the code as it is."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_committed_cli_page_is_current():
    # a subprocess: nfst.cli reads NFST_CACHE_DIR when first imported, the generator unsets it
    fresh = subprocess.run(
        [sys.executable, "-m", "tools.cli_reference", "-"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    committed = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert committed == fresh, (
        "docs/cli.md is not what the parser and presets give; "
        "regenerate with: python -m tools.cli_reference"
    )
