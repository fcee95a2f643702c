from adacal.cli import main

main()
