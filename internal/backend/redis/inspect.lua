-- Describe the holder. KEYS[1] lock hash. Returns {holder-fields, pttl}.
return {redis.call('HGETALL', KEYS[1]), redis.call('PTTL', KEYS[1])}
