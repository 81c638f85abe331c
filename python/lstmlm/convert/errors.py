"""The one error type of the converters."""


class ConvertError(Exception):
    """A source that cannot be converted; the message names the file, the layer/tensor and the reason."""
