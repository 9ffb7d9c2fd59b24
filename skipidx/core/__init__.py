"""Core formats: the Split Block Bloom Filter, hashing, Parquet interop, types, the tokenizer API, errors."""
