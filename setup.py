"""Build configuration for the compiled reader (everything else is in pyproject.toml).

The extension is optional: where no C compiler works, the build warns and the package
installs without it, reading with the pure-Python fast reader (docs/compiled-reader.md).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "vocmatch.readers.fastxml",
            sources=["vocmatch/readers/fastxml.c"],
            optional=True,
        )
    ]
)
