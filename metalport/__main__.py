from metalport.cli import console_main

console_main()
