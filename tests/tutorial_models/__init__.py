"""laddu tutorial models, each written once against laddu 0.28.1's API (``ld`` is either library)."""
