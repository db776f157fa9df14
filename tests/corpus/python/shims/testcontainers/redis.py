import os


class RedisContainer:
    def __init__(self, image="redis:latest", port=6379, password=None, **kwargs):
        addr = os.environ.get("KEYPLAN_REC_REDIS", "127.0.0.1:6379")
        self._host, _, p = addr.rpartition(":")
        self.port = int(p)
        self.port_to_expose = self.port
        self.password = password

    def start(self):
        return self

    def stop(self, *a, **k):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def with_bind_ports(self, *a, **k):
        return self

    def with_exposed_ports(self, *a, **k):
        return self

    def with_command(self, *a, **k):
        return self

    def with_env(self, *a, **k):
        return self

    def get_container_host_ip(self):
        return self._host

    def get_exposed_port(self, port=None):
        return self.port

    def get_client(self, **kwargs):
        import redis

        return redis.Redis(host=self._host, port=self.port, password=self.password, **kwargs)


class AsyncRedisContainer(RedisContainer):
    async def get_async_client(self, **kwargs):
        import redis.asyncio

        return redis.asyncio.Redis(host=self._host, port=self.port, password=self.password, **kwargs)
