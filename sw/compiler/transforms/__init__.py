"""Passes within one IR level (SCF annotation, SLC/SLCV optimisation, DLC queue layout).

Each module holds one xDSL ``ModulePass`` (kebab-case ``name``) and the function-level rewrite it
applies; ``sw.compiler.pipelines`` chains them into the ``-O0`` … ``-O3`` pipelines
(docs/compiler.md, "Optimisation levels").
"""
