#!/usr/bin/env python3
"""Regenerate docs/report.png, the README's picture of report.html: the page of a fixture's
migration, filtered to one file, as headless Chromium shows it.

    python scripts/report_screenshot.py [FIXTURE] [FILE]
"""
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    fixture = sys.argv[1] if len(sys.argv) > 1 else "llm_env_project"
    shown = sys.argv[2] if len(sys.argv) > 2 else "requirements.txt"
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        sys.exit("needs Chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([sys.executable, "-m", "gpu2npu", "-i", str(ROOT / "fixtures" / "cuda_scripts" / fixture), "-o",
                        work, "-v", "2.1.0", "--no-cache"], check=True, capture_output=True)
        page = Path(work) / f"{fixture}_msft" / "report.html"
        target = ROOT / "docs" / "report.png"
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--window-size=1200,1500", f"--screenshot={target}", f"{page.as_uri()}#file={shown}"],
                       check=True, capture_output=True)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
