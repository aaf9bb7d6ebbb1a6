"""The benchmark: the seeded sampler of the six packages (`sampler`), the Hub-ready dataset folder, card and
builder (`dataset`), dataset statistics (`stats`)."""
