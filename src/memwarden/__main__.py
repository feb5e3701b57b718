"""``python -m memwarden``: the ``memwarden`` command line."""

from memwarden.cli import main

if __name__ == "__main__":
    main()
