"""Build configuration for the compiled extensions (everything else is in pyproject.toml).

The extensions are optional: where no C compiler works, the build warns and the package
installs without them, reading with the pure-Python fast reader (docs/compiled-reader.md)
and accumulating with numpy (docs/compiled-accumulation.md).
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
            "vocmatch.evaluation.fastaccumulate",
            sources=["vocmatch/evaluation/fastaccumulate.c"],
            optional=True,
        ),
    ]
)
