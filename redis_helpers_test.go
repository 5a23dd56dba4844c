package ratelimit_test

import "github.com/redis/go-redis/v9"

func redisZ(score float64) redis.Z { return redis.Z{Score: score, Member: "x"} }
