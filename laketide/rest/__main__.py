from laketide.rest.serve import main

main()
