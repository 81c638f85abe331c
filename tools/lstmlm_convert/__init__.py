"""Converters from Keras (.h5 / .keras), PyTorch (.pt) and, in tf1.py, TF1 checkpoints into the lstmlm model
directory (written by lstmlm_format.write_model). Entry point: tools/convert.py.

Each converter module has detect(path) -> bool, add_arguments(parser) and convert(source, args) -> dict (the
keyword arguments of lstmlm_format.write_model). Shared: vocab.py (load_vocab), unpickle.py (restricted
unpickler), common.py (tokenizer options, assemble()).
"""
