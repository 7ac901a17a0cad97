.version 0
.args 8
layer 0  lb=#0 ub=a0 step=#1
layer 1  lb=s1 ub=s2 step=#1 check_order
layer 2  lb=#0 ub=a5 step=#1
region 0 base=a1 size=a2
region 1 base=a3 size=a4
region 2 base=a6 size=a7
stream 0 layer=0 alu  add a=i0 b=#1
stream 1 layer=0 mem  region=0 a=a1 b=i0 stride=8 size=8
stream 2 layer=0 mem  region=0 a=a1 b=s0 stride=8 size=8
stream 3 layer=1 mem  region=1 a=a3 b=i1 stride=8 size=8
stream 4 layer=2 alu  mul a=s3 b=a5
stream 5 layer=2 alu  add a=s4 b=i2
stream 6 layer=2 mem  region=2 a=a6 b=s5 stride=8 size=8
action layer=2 iter operand i0
action layer=2 iter operand i2
action layer=2 iter operand s6
action layer=2 iter control 0
