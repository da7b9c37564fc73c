from memex.cli.entry import main

main()
