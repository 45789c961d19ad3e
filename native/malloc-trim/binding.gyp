{
  "targets": [
    {
      "target_name": "malloc_trim",
      "sources": ["src/malloc_trim.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
