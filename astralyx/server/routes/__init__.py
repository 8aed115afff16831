"""Routes per resource; each module exposes `router`."""
