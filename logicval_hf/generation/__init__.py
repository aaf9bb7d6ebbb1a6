"""Image generation: the fast numpy renderer and its layout, the built-in reference generators (oracle, naive,
perturbed), the text-to-image harness and the table of T2I model families."""
