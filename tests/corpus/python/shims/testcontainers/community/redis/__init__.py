from testcontainers.redis import *  # noqa
