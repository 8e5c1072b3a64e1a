"""The tools every benchmarked server exposes: ``echo`` and ``progress_echo``, same shapes as the SDK server's."""
