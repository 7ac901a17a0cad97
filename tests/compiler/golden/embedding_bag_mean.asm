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
stream 3 layer=0 alu  sub a=s2 b=s1
stream 4 layer=0 alu  max a=s3 b=#1
stream 5 layer=1 mem  region=1 a=a3 b=i1 stride=8 size=8
stream 6 layer=2 alu  mul a=s5 b=a5
stream 7 layer=2 alu  add a=s6 b=i2
stream 8 layer=2 mem  region=2 a=a6 b=s7 stride=4 size=4
action layer=2 iter operand i0
action layer=2 iter operand i2
action layer=2 iter operand s8
action layer=2 iter control 0
action layer=1 end operand s4
action layer=1 end operand i0
action layer=1 end control 1
