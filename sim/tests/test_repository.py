"""Repository-wide rules (issue 18): one licence named everywhere, nothing a reader
follows points outside the repository, and each package keeps to its own model."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_repository_is_apache_2_and_the_images_and_chart_say_so():
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX" in text
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG LICENSES=Apache-2\.0$", dockerfile, re.M)
    assert "NOASSERTION" not in dockerfile
    chart = yaml.safe_load((ROOT / "charts" / "satpage" / "Chart.yaml").read_text())
    assert chart["annotations"]["licenses"] == "Apache-2.0"
    assert chart["annotations"]["artifacthub.io/license"] == "Apache-2.0"
    # the embedded population grid keeps its own licence and attribution
    assert "CC BY 4.0" in (ROOT / "data" / "README.md").read_text()
