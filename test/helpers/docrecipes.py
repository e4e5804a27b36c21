"""The code blocks of docs/extending.md's recipes, for the tests that run them."""

import pathlib

DOCS = pathlib.Path(__file__).resolve().parents[2] / 'docs'


def recipe(heading: str, doc: str = 'extending.md') -> str:
    """Return the first ```python block under ``## heading`` in docs/``doc``."""
    text = (DOCS / doc).read_text()
    section = text.split(f'\n## {heading}', 1)[1].split('\n## ', 1)[0]
    return section.split('```python\n', 1)[1].split('```', 1)[0]
