"""The small core every layer may use: the errors (one class per contract code), names and
places, keys and scopes, signed URLs, the geography and its prices, and the text forms of
stored values. It imports nothing else of the emulator.
"""
