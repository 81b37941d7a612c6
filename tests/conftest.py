pytest_plugins = ["tests.support.emulator"]
