"""pytest stand-ins for Docker fixtures (recording only; loaded with -p keyplan_shims).

The services a suite would start in Docker are the private redis-servers that
tests/corpus/run.py starts in the suite's network namespace on the ports the package's table
names; anything else (Sentinel, Cluster, TLS, Memcached, MongoDB) is absent and its tests fail.
"""
import pytest


class _Services:
    def start(self, *names, **kw):
        pass

    def stop(self, *names, **kw):
        pass

    def wait_for_service(self, name, port, check=None, *a, **k):
        return port

    def wait_until_responsive(self, *a, **k):
        pass

    def port_for(self, name, port):
        return port

    def execute(self, *a, **k):
        return b""


@pytest.fixture(scope="session")
def docker_services():
    return _Services()


@pytest.fixture(scope="session")
def docker_ip():
    return "127.0.0.1"
