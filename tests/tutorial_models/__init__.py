"""laddu's tutorial models written once against laddu 0.28.1's API, built with either library."""
