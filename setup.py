"""Build configuration for the compiled reader and matching kernels (everything else is in
pyproject.toml).

The extensions are optional: where no C compiler works, the build warns and the package
installs without them, reading with the pure-Python fast reader (docs/compiled-reader.md)
and matching with numpy (docs/compiled-engine.md).
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
    ]
)
