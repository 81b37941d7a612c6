pytest_plugins = ["tests.support.emulator", "tests.support.aws"]
