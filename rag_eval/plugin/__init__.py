"""The pytest plugin (entry point ``rag_eval.plugin.hooks``): hooks, options → one frozen
``RunConfig``, collection, one ``Run`` under one ``StashKey`` with the ``Controller`` on the
controller, and the terminal lines. See docs/architecture.md."""
