def oops(
