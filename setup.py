"""Build configuration for the compiled extensions (everything else is in pyproject.toml).

The extensions are optional: where no C compiler works, the build warns and the package
installs without them, reading with the pure-Python fast reader (docs/compiled-reader.md),
matching with numpy (docs/compiled-matching.md), accumulating with numpy under every
protocol (docs/compiled-accumulation.md) and writing JSON numbers with Python's json encoder
(docs/compiled-json.md). The results are the same bits either way.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "vocmatch.readers.fastxml",
            sources=["vocmatch/readers/fastxml.c"],
            optional=True,
        ),
        Extension(
            "vocmatch.core.fastmatch",
            sources=["vocmatch/core/fastmatch.c"],
            optional=True,
        ),
        Extension(
            "vocmatch.evaluation.fastaccumulate",
            sources=["vocmatch/evaluation/fastaccumulate.c"],
            optional=True,
        ),
        Extension(
            "vocmatch.evaluation.fastsummary",
            sources=["vocmatch/evaluation/fastsummary.c"],
            optional=True,
        ),
        Extension(
            "vocmatch.render.fastjson",
            sources=["vocmatch/render/fastjson.c"],
            depends=["vocmatch/render/fastjson_table.h"],
            optional=True,
        ),
    ]
)
