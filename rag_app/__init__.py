"""A small, real hybrid RAG pipeline: the system under test, and a model for your own."""
