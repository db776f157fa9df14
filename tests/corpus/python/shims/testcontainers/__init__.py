# A stand-in for testcontainers (recording only): the "container" is the private redis-server
# that tests/corpus/run.py starts on 127.0.0.1:6379 (or KEYPLAN_REC_REDIS) in the suite's network
# namespace. No Docker is run.
