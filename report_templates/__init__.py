"""Jinja2 template and inline assets of the HTML failure report (``rag_eval.outputs.html``).

A package so that the template, CSS and JS ship inside the wheel and load with
``jinja2.PackageLoader`` wherever rag_eval is installed; no code lives here.
"""
