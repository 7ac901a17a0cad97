.version 0
.args 10
layer 0  lb=#0 ub=a0 step=#1
layer 1  lb=s1 ub=s2 step=#1 check_order
layer 2  lb=#0 ub=a7 step=#1
region 0 base=a1 size=a2
region 1 base=a3 size=a4
region 2 base=a5 size=a6
region 3 base=a8 size=a9
stream 0 layer=0 alu  add a=i0 b=#1
stream 1 layer=0 mem  region=0 a=a1 b=i0 stride=8 size=8
stream 2 layer=0 mem  region=0 a=a1 b=s0 stride=8 size=8
stream 3 layer=1 mem  region=1 a=a3 b=i1 stride=8 size=8
stream 4 layer=1 mem  region=2 a=a5 b=i1 stride=4 size=4
stream 5 layer=2 alu  mul a=s3 b=a7
stream 6 layer=2 alu  add a=s5 b=i2
stream 7 layer=2 mem  region=3 a=a8 b=s6 stride=4 size=4
action layer=2 iter operand i0
action layer=2 iter operand i2
action layer=2 iter operand s4
action layer=2 iter operand s7
action layer=2 iter control 0
