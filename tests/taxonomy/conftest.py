import pytest

from taxonomy.services import codebook_load

SMALL_CODEBOOK = {
    "name": "Small",
    "version": "1.0",
    "dimensions": [
        {
            "key": "cause",
            "name": "Cause",
            "categories": [
                {"key": "api", "name": "API misuse", "definition": "Wrong use of an API."},
                {
                    "key": "config",
                    "name": "Configuration",
                    "children": [
                        {"key": "default", "name": "Wrong default"},
                        {"key": "propagation", "name": "Propagation"},
                    ],
                },
                {"key": "typo", "name": "Typo"},
                {"key": "logic", "name": "Logic"},
            ],
        },
        {
            "key": "fix",
            "name": "Fix",
            "multi_label": True,
            "required": False,
            "categories": [
                {"key": "guard", "name": "Guard"},
                {"key": "rewrite", "name": "Rewrite"},
            ],
        },
    ],
}


@pytest.fixture
def small_version(db):
    version, _ = codebook_load(data=SMALL_CODEBOOK, publish=True)
    return version
