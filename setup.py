"""Build configuration for the compiled extensions (everything else is in pyproject.toml).

The extensions are optional: where no C compiler works, the build warns and the package
installs without them, reading with the pure-Python fast reader (docs/compiled-reader.md),
matching with numpy (docs/compiled-matching.md), accumulating with numpy under every
protocol (docs/compiled-accumulation.md) and writing JSON numbers with Python's json encoder
(docs/compiled-json.md). The results are the same bits either way.
"""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """Every extension is compiled without floating-point contraction: a compiler may
    otherwise fuse ``a * b + c`` into one multiply-add, rounded once instead of twice (GCC
    does by default where the processor has the instruction, as on aarch64), and the
    kernels repeat numpy's float operations one by one to give its bits."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type in ("unix", "mingw32", "cygwin"):
            for extension in self.extensions:
                extension.extra_compile_args.append("-ffp-contract=off")
        super().build_extensions()


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=[
        Extension(
            "vocmatch.readers.fastxml",
            sources=["vocmatch/readers/fastxml.c"],
            optional=True,
        ),
        Extension(
            "vocmatch.core.fastmatch",
            sources=["vocmatch/core/fastmatch.c"],
            depends=["vocmatch/buffers.h", "vocmatch/parts.h"],
            optional=True,
        ),
        Extension(
            "vocmatch.evaluation.fastaccumulate",
            sources=["vocmatch/evaluation/fastaccumulate.c"],
            depends=["vocmatch/buffers.h", "vocmatch/parts.h"],
            optional=True,
        ),
        Extension(
            "vocmatch.evaluation.fastsummary",
            sources=["vocmatch/evaluation/fastsummary.c"],
            depends=["vocmatch/buffers.h", "vocmatch/parts.h"],
            optional=True,
        ),
        Extension(
            "vocmatch.render.fastjson",
            sources=["vocmatch/render/fastjson.c"],
            depends=["vocmatch/buffers.h", "vocmatch/render/fastjson_table.h"],
            optional=True,
        ),
    ]
)
