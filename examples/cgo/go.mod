module cvmc.example/infer

go 1.19
