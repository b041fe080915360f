package main

// replaced by the real entry point
func main() {}
