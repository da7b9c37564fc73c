from memex.cli.main import main

main()
