"""Derived indexes over the store: dense (FAISS), sparse (BM25) and their fusion (weighted RRF)."""
