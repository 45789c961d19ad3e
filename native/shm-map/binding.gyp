{
  "targets": [
    {
      "target_name": "shm_map",
      "sources": ["src/shm_map.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-std=gnu11"]
    }
  ]
}
