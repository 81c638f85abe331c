"""Converters from Keras (.h5 / .keras), TF2 SavedModel, TF.js, PyTorch (.pt), ONNX, TF1 checkpoints and ml5
into the lstmlm model directory (written by lstmlm.format.write_model). Entry points: `python3 -m lstmlm.convert
SOURCE OUTDIR` (__main__.py) and, in a source checkout, `python3 tools/convert.py SOURCE OUTDIR`, both running
cli.main. Pure Python (numpy, h5py, onnx as a source needs them): the compiled lstmlm._lstmlm is not needed.

Each converter module has detect(path) -> bool, add_arguments(parser) and convert(source, args) -> dict (the
keyword arguments of lstmlm.format.write_model). Shared: vocab.py (load_vocab), unpickle.py (restricted
unpickler), common.py (tokenizer options, assemble()), contained.py (reads kept inside the model's directory).
"""
