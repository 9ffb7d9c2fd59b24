"""Built-in skipidx tokenizers (installed as `skipidx_tokenizers`), registered via the `skipidx.tokenizers` entry-point group."""
